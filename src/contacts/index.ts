/** Contacts. */
export { Contact, ContactList, CreateContactRequest, toContact, UpdateContactRequest } from "./Contact.ts"
export { ContactService } from "./ContactService.ts"
