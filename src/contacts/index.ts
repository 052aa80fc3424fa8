/** Contacts. */
export { Contact, ContactDeleted, ContactList, CreateContactRequest, toContact, UpdateContactRequest } from "./Contact.ts"
export { ContactErasureService } from "./ContactErasureService.ts"
export { ContactService } from "./ContactService.ts"
